"""banking_knowledge's retrieval: the configurations, their policies, tools and backends."""

from tau_mcp.servers.domains.banking_knowledge.retrieval.service import (
    BankingRetrieval,
    BankingVariants,
)
from tau_mcp.servers.domains.banking_knowledge.retrieval.tools import RetrievalTools

__all__ = ["BankingRetrieval", "BankingVariants", "RetrievalTools"]
