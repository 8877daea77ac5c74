"""The services: what the front ends call, built on the engine. One module a capability:

- `search`: the search service (`search_documents`, seed 000's `retrieve_top_docs`, seed 001's `retrieve_chunks`,
  seed 003's `RetrievalService`, the LangChain retriever service);
- `store_comparison`: one collection in two stores, side by side, and copying between them;
- `sessions`: saved search sessions (SQLite or PostgreSQL);
- `events`: RetrievalCompleted events to a file or RabbitMQ;
- `explain`: why a reranker moved a document;
- `hints`: why a search found nothing;
- `demo`: the demo collection and its judgments;
- `preferences`: blind preference sessions (start, the next pair, choices and undo, the verdict);
- `sources`: where the judged queries to evaluate come from (files, the demo, BEIR, the judgments store), and a
  production system's exported candidates attached as a collection.

The services floor has an order, checked by `tests/test_layout.py`: `workbench.evaluation` (measuring: metrics,
significance, rank agreement, stage timings), then `workbench.judgments`, then `workbench.experiments`, then
`workbench.preferences`, then these services; each may import the ones before it, never one after. The contract
names are importable from `workbench` itself.
"""
