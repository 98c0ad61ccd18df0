"""Tasks, prompts and numbers: the paper's task families, their prompts and answers (``tasks``),
where each number lies in a prompt (``layout``, ``numbers``: numbers of several tokens) and
which rows of an accuracy table a stage draws (``sampling``).
"""
