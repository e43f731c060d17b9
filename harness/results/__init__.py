"""Results files: what a run records, and how it is written and read in each layout.

- `record.py`: a simulation's record and the run header (the reference's results layout, our
  extensions named), built in one place and checked there when read;
- `file.py`: a run's results file being written (journal, atomic saves, redaction), and the
  writing of a whole document at once (`evaluate`, `review`);
- `load.py`: reading a results file for use (journal folded in, one result per trial, tasks
  checked, keys hidden);
- `layouts.py`, `folder.py`: the three layouts on disk (ours, the reference's `json` and `dir`),
  one writer and one reader each, byte for byte; `convert.py`: `convert-results`;
- `lock.py`: one writer per results file; `resume.py`: may a run resume into a file.

The names most callers need are importable from here.
"""

from tau_mcp.harness.results.file import (
    ResultsError,
    ResultsFile,
    ResultsWriteError,
    atomic_write,
    journal_path,
    refuse_unfinished_run,
    write_document,
    write_regraded,
)
from tau_mcp.harness.results.load import check_tasks, load_results, read_journal, records
from tau_mcp.harness.results.lock import ResultsLocked, lock_path, results_lock
from tau_mcp.harness.results.record import (
    INFRA,
    AgentInfo,
    EnvironmentInfo,
    RunHeader,
    RunInfo,
    SimulationRecord,
    UserInfo,
)

__all__ = [
    "INFRA",
    "AgentInfo",
    "EnvironmentInfo",
    "ResultsError",
    "ResultsFile",
    "ResultsLocked",
    "ResultsWriteError",
    "RunHeader",
    "RunInfo",
    "SimulationRecord",
    "UserInfo",
    "atomic_write",
    "check_tasks",
    "journal_path",
    "load_results",
    "lock_path",
    "read_journal",
    "records",
    "refuse_unfinished_run",
    "results_lock",
    "write_document",
    "write_regraded",
]
