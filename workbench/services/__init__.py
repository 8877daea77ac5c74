"""The services: what the front ends call, built on the engine. One module a capability:

- `search`: the search service (`search_documents`, seed 000's `retrieve_top_docs`, seed 001's `retrieve_chunks`,
  seed 003's `RetrievalService`, the LangChain retriever service);
- `agreement`: how much two rankings agree (overlap, rank correlation);
- `store_comparison`: one collection in two stores, side by side, and copying between them;
- `sessions`: saved search sessions (SQLite or PostgreSQL);
- `events`: RetrievalCompleted events to a file or RabbitMQ;
- `latency`: stage timings over a query sample, and rerank time by k;
- `explain`: why a reranker moved a document;
- `hints`: why a search found nothing;
- `demo`: the demo collection and its judgments.

The evaluation (`workbench.evaluation`) and the judgments (`workbench.judgments`) are services too, each a
package of its own. The contract names are importable from `workbench` itself.
"""
