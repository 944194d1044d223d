"""The tree keeps its shape: a source file of over 600 lines says at its top why it is one file
("Over 600 lines: ..."), so that a grab bag is split before it grows, not after."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ["core", "sbp", "boxing", "ops", "global", "graph", "oneflowlike", "python", "tests",
           "benchmarks", "examples", "scripts"]  # fmt: skip
SUFFIXES = {".cpp", ".h", ".cu", ".cuh", ".py"}
# Other people's programs, run as they are published (test_public_programs.py).
NOT_OURS = ROOT / "tests" / "python" / "public_programs"
LIMIT = 600


def sources():
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file() and NOT_OURS not in path.parents:
                yield path


def test_a_source_file_over_600_lines_says_why_at_its_top():
    unexplained = []
    for path in sources():
        lines = path.read_text(errors="replace").splitlines()
        if len(lines) > LIMIT and not any("Over 600 lines:" in line for line in lines[:50]):
            unexplained.append(f"{path.relative_to(ROOT)}: {len(lines)} lines")
    assert not unexplained, "split these, or say why not at their top:\n" + "\n".join(unexplained)
