"""telecom-workflow: the telecom domain under the workflow tech-support policy.

Same tools, databases and tasks as telecom (its data folder); only the tech-support part of the
policy differs: the step-by-step workflow instead of the manual.
"""

import dataclasses

from tau_mcp.servers.domains.telecom import SPEC as TELECOM

SPEC = dataclasses.replace(
    TELECOM,
    name="telecom-workflow",
    data_folder="telecom",
    policy_files=("main_policy.md", "tech_support_workflow.md"),
    solo_policy_files=("main_policy_solo.md", "tech_support_workflow_solo.md"),
)
