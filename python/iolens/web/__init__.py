"""`iolens web`: the center's I/O portal, served from the statistics database (docs/web.md).

A Starlette application (app.py) run by uvicorn (server.py). Who is asking is decided once per request
(auth.py: a trusted reverse proxy's user header, or the portal's own tokens and signed session cookies);
every page asks the store layer (iolens.store) and renders a Jinja2 template with autoescape. Users see only
their own jobs; staff see everything. Assets (plotly.js, the portal's script and styles) are served by the
app itself; nothing is loaded from elsewhere.
"""
