"""The banking_knowledge domain: Rho-Bank's customer service over a knowledge base.

The agent looks customers up, logs verifications, and finds further tools by name in the
knowledge base (discoverable tools: unlocked and called by the agent, or given to the customer,
who then calls them). Agent and customer act on one database (`shared_db`): the episode state
has no user database. Tasks are the files of `tasks/` (see docs/engine.md for how they differ
from tasks.json). Retrieval tools (KB_search, grep, ...) are not part of the domain's toolkit:
an episode's retrieval config (retrieval/) adds them to its agent toolkit (`Toolkit.add_tools`).
"""

from tau_mcp.servers.domains.banking_knowledge.agent_tools import KnowledgeTools
from tau_mcp.servers.domains.banking_knowledge.models import TransactionalDB
from tau_mcp.servers.domains.banking_knowledge.policy import POLICY_FILES, compose
from tau_mcp.servers.domains.banking_knowledge.retrieval import BankingVariants
from tau_mcp.servers.domains.banking_knowledge.user_tools import KnowledgeUserTools
from tau_mcp.servers.engine.domain import DomainSpec

SPEC = DomainSpec(
    name="banking_knowledge",
    db_model=TransactionalDB,
    agent_tools=KnowledgeTools,
    user_tools=KnowledgeUserTools,
    shared_db=True,
    policy_files=POLICY_FILES,
    # The reference refuses solo mode for this domain.
    solo_policy_files=(),
    policy_layout=compose,
    task_files="tasks/task_*.json",
    # Its agent toolkit is the retrieval config without retrieval tools.
    tool_variant="no_knowledge",
    # The retrieval configs (`--retrieval-config`): each episode's retrieval tools and policy.
    variants=BankingVariants,
)
