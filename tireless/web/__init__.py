"""`tireless web`: the dashboard, `/metrics` and the forge webhooks (the optional extra
`tireless-store[web]`). `tireless.web.app.create_app` builds the ASGI app; `tireless.web.launch`
starts `tireless web` as a background process (for `make run`) without importing the web stack."""
