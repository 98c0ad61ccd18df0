"""The figures' shared look (``style``) and how every figure is laid out (``figure_layout``)."""
