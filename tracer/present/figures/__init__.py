"""Figures for the reports: deterministic SVG written by our own code, sized to stay readable on a phone.

Heatmaps (:mod:`.heat`), bar charts (:mod:`.bars`) and the embedding
vectors (:mod:`.vectors`, in 3-D through :mod:`.space`) are a few lines,
polygons, rectangles and labels placed in CSS pixels (:mod:`.marks`), so
they draw in milliseconds, need no plotting library and come out byte for
byte the same on every machine.  Every figure is drawn from numbers and
labels the view model has already prepared.
"""
