"""The operator UI's pages, one module each (board, task, inbox, bulk, demo, audit), with
what they share: who may act (`access`) and the answer card the inbox, the task page and
the demo all draw (`answer_card`). Each page module holds its views and its presenter
(`context(...)`: what its template needs). Views are thin: reads go through
`dashboard.selectors`, writes through `dashboard.actions` (which calls `a2a.services` and
audits). Pages are server-rendered; static/js keeps them live from the AG-UI WebSocket."""
