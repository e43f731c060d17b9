"""Knowledge bases and their offline retrievers (BM25, grep), shared by every episode."""
