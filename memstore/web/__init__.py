"""`memstore web`: a local web page over the store for a person: the store's health, memories found
by search or as of any moment, runs to undo, contradiction flags to settle.

`guard` is the door (Host, token, CSRF, headers), `pages` the routes and their templates,
`queries` the page's own reads, `charts` the inline SVG, `serve` the command. Needs the web extra
(`pip install 'memstore-agents[web]'`); `import memstore` never loads it.
"""
