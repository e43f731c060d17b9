"""From results files to the tau2 leaderboard: submission folders, their checks, the board.

A submission folder is the reference's: `submission.json` (valid against the board's schema,
which is read from the data folder at run time) and `trajectories/<domain>_results.json`.
The modules, one job each:

- `metrics`: pass^1..4 and cost per domain, computed the way the board recomputes them;
- `schema`: the board's JSON schema and what it says (domains, fields);
- `rules`: the board's rules for a set of runs (trials, tasks, one run per domain, ...);
- `submission`: metadata and writing a folder (`tau-harness submit prepare`);
- `validate`: checking a folder, ours or anyone's (`tau-harness submit validate`);
- `board`: ranking folders of submissions (`tau-harness leaderboard`);
- `convert`: results files between our layout and the reference's `json` and `dir` layouts.
"""

SUBMISSION_FILE = "submission.json"
TRAJECTORIES_DIR = "trajectories"
