"""The Marathon-like serving framework (``corral run serving --config app.json``): keeps an
app's instances running, spread, health-checked, restarted with backoff, scaled and rolled
(docs/frameworks.md, "Serving")."""
