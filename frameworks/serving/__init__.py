"""The Marathon-like serving framework: keeps an app's instances running, spread,
health-checked, restarted with backoff, scaled and rolled (docs/frameworks.md, "Serving").
``corral run serving --config app.json`` runs one app in the foreground; ``corral serving
serve`` runs it as a service of many apps with an HTTP API, a store and deployments
(service.py, "The serving service")."""
