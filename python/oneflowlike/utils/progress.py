"""A tiny tqdm-like progress bar.

On a terminal it redraws one line with "\\r" (at most every ``refresh_interval`` seconds). Into
a file or pipe it prints whole lines: one per ``percent_step`` percent when the total is known,
else one per ``line_interval`` seconds, never more often than every ``line_interval`` seconds,
plus a last line on close.
"""

import sys
import time

__all__ = ["Progress", "progress"]


def _format_time(seconds):
    seconds = int(seconds)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:d}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes:02d}:{seconds:02d}"


def _format_value(value):
    if hasattr(value, "item") and callable(value.item):
        try:
            value = value.item()
        except Exception:  # a tensor of several elements: print as is
            pass
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


class Progress:
    """Wraps an iterable (or counts to ``total`` with ``update``) and reports progress."""

    def __init__(
        self,
        iterable=None,
        total=None,
        desc=None,
        file=None,
        unit="it",
        width=25,
        disable=False,
        refresh_interval=0.1,
        line_interval=1.0,
        percent_step=10,
        leave=True,
    ):
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.iterable = iterable
        self.total = total
        self.desc = desc
        self.file = file if file is not None else sys.stderr
        self.unit = unit
        self.width = width
        self.disable = disable
        self.refresh_interval = refresh_interval
        self.line_interval = line_interval
        self.percent_step = percent_step
        self.leave = leave
        self.n = 0
        self.postfix = ""
        self.start_time = time.monotonic()
        self._last_print = None
        self._last_bucket = 0
        self._closed = False
        isatty = getattr(self.file, "isatty", None)
        self.interactive = bool(isatty and isatty())

    # ---- public API -----------------------------------------------------------------------

    def __iter__(self):
        if self.iterable is None:
            raise TypeError("progress() was given no iterable; call update() instead")
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __len__(self):
        return self.total if self.total is not None else len(self.iterable)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def update(self, n=1):
        self.n += n
        self._maybe_print()

    def set_description(self, desc=None, refresh=True):
        self.desc = desc
        if refresh:
            self._maybe_print()

    def set_postfix(self, ordered_dict=None, refresh=True, **kwargs):
        items = dict(ordered_dict or {})
        items.update(kwargs)
        self.postfix = ", ".join(f"{k}={_format_value(v)}" for k, v in items.items())
        if refresh:
            self._maybe_print()

    def close(self):
        if self._closed:
            return
        self._closed = True
        if self.disable:
            return
        if self.interactive:
            if self.leave:
                self._write("\r" + self.format() + "\n")
            else:
                self._write("\r" + " " * len(self.format()) + "\r")
        elif self.leave and self._last_printed_n != self.n:
            self._write(self.format() + "\n")

    # ---- formatting and pacing ------------------------------------------------------------

    _last_printed_n = None

    def format(self):
        elapsed = time.monotonic() - self.start_time
        rate = self.n / elapsed if elapsed > 0 else 0.0
        rate_text = (
            f"{rate:.2f}{self.unit}/s" if rate >= 1 or rate == 0 else f"{1 / rate:.2f}s/{self.unit}"
        )
        prefix = f"{self.desc}: " if self.desc else ""
        if self.total:
            fraction = min(1.0, self.n / self.total)
            filled = int(fraction * self.width)
            bar = "#" * filled + " " * (self.width - filled)
            remaining = (self.total - self.n) / rate if rate > 0 else 0.0
            text = (
                f"{prefix}{fraction * 100:3.0f}%|{bar}| {self.n}/{self.total} "
                f"[{_format_time(elapsed)}<{_format_time(remaining)}, {rate_text}"
            )
        else:
            text = f"{prefix}{self.n}{self.unit} [{_format_time(elapsed)}, {rate_text}"
        return text + (f", {self.postfix}]" if self.postfix else "]")

    def _write(self, text):
        self.file.write(text)
        self.file.flush()

    def _maybe_print(self):
        if self.disable or self._closed:
            return
        now = time.monotonic()
        since = None if self._last_print is None else now - self._last_print
        if self.interactive:
            if since is None or since >= self.refresh_interval or self.n == self.total:
                self._last_print = now
                self._write("\r" + self.format())
            return
        if since is not None and since < self.line_interval:
            return
        if self.total:
            bucket = int(self.n * 100 / self.total // self.percent_step)
            if bucket <= self._last_bucket:
                return
            self._last_bucket = bucket
        elif since is None and self.n == 0:
            return
        self._last_print = now
        self._last_printed_n = self.n
        self._write(self.format() + "\n")


def progress(iterable=None, total=None, desc=None, **kwargs):
    """``for batch in progress(loader, desc="train"): ...``; see Progress for options."""
    return Progress(iterable, total=total, desc=desc, **kwargs)
