"""A project's files: where every output lives (``outputs``), reading and writing tables, figures,
logs and JSON (``io``), the progress of long loops (``progress``), the residual cache's layout
and reading (``cache``) and a project's outputs read back from Python (``results``).
"""
