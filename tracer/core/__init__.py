"""The trace: steps, ids, number formatting and the trace file. numpy only.

The bottom layer of the flow inputs -> record -> **core** -> compare / present.
Nothing here imports torch, a renderer or another layer of the package.
"""
