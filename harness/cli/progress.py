"""The progress bar of the commands that run many things (`run`, `review`): rich's, less the
empty line it prints when it stops on a console that is not a terminal even though no bar was
ever shown (a run refused as it started, by a missing key or an unwritable results file,
printed a blank line before its one-sentence error). Its own module: rich's progress costs
imports the other commands do without."""

from __future__ import annotations

from rich.progress import Progress as RichProgress


class Progress(RichProgress):
    """A rich progress display whose `stop` prints nothing when nothing was shown."""

    def stop(self) -> None:
        if self.disable or self.console.is_interactive or any(t.visible for t in self.tasks):
            super().stop()
        else:
            self.live.stop()
