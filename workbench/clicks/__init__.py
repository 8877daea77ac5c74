"""Clicks, in one room: what users did with a result list, and what it says about a ranking.

- `impressions`: the one impression type (a list as shown, what was clicked; served interleaved lists carry their
  id and teams) and the one JSON-lines reader of click logs.
- `logs`: click logs in (plain CSV or JSON lines, User Behavior Insights 1.0).
- `models`: click models (COEC, the position-based model) and simulated clicks.
- `grades`: judgments from clicks, kept in the judgments store with their agreement with people's grades.
- `interleaving`: team-draft interleaving, its analysis and an online test's size.
- `online`: the online test `workbench serve` runs (interleaved /search answers, /clicks, their log).
- `queue`: clicks from the events queue (RabbitMQ) into that log.
"""
