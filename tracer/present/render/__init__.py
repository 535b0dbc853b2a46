"""Renderers: one module per format (:mod:`.html`, :mod:`.markdown`), sharing the view model and :mod:`.env`."""
