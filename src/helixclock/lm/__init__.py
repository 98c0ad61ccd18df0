"""The language models: the family table (``families``) and the hook points it gives each
architecture (``adapters``), the config and the model registry (``config``), where a model's
weights come from (``sources``), loading (``models``), a model's card (``model_card``) and the
embedded toys (``toy``).
"""
