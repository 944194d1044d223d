"""utils.progress: terminal redraws and log-friendly lines."""

import io

from oneflowlike.utils.progress import progress


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_iterating_yields_every_item_and_prints_a_final_line():
    out = io.StringIO()
    items = list(progress(range(7), desc="train", file=out))
    assert items == list(range(7))
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("train: 100%|") and "7/7" in last


def test_non_tty_prints_whole_lines_without_carriage_returns():
    out = io.StringIO()
    for _ in progress(range(1000), file=out, line_interval=0.0, percent_step=25):
        pass
    text = out.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert [line.split("%")[0].strip() for line in lines] == ["25", "50", "75", "100"]


def test_non_tty_lines_are_rate_limited_in_time():
    out = io.StringIO()
    for _ in progress(range(1000), file=out, line_interval=60.0, percent_step=1):
        pass
    assert len(out.getvalue().splitlines()) == 2  # the first bucket, then the closing line


def test_tty_redraws_one_line_with_carriage_returns():
    out = FakeTTY()
    bar = progress(total=3, file=out, refresh_interval=0.0)
    for _ in range(3):
        bar.update()
    bar.close()
    text = out.getvalue()
    assert text.count("\r") >= 3 and text.endswith("\n") and text.count("\n") == 1


def test_set_postfix_formats_floats_and_scalar_like_values():
    class Scalar:
        def item(self):
            return 0.123456

    out = io.StringIO()
    bar = progress(total=2, file=out)
    bar.set_postfix(loss=Scalar(), step=2)
    bar.update(2)
    bar.close()
    assert "loss=0.1235, step=2]" in out.getvalue().splitlines()[-1]


def test_unknown_total_shows_a_count_and_rate():
    out = io.StringIO()
    for _ in progress(iter(range(5)), file=out, unit="batch"):
        pass
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("5batch [") and "batch/s" in last


def test_disable_prints_nothing():
    out = io.StringIO()
    list(progress(range(3), file=out, disable=True))
    assert out.getvalue() == ""
