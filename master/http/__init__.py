"""The master's HTTP room (aiohttp): the routes (health, state as JSON, explanations, metrics,
the web UI's API), operators' actions and tasks' files over HTTP, the state's one JSON shape,
and the sign-in page. Who may ask what is ``corral.master.security``'s."""
