"""ophook's usercustomize entry (the seed's on-demand switch): same as the shim's sitecustomize.

Python imports `usercustomize` after `sitecustomize` when user site-packages are enabled; starting
twice is harmless (the first start wins).
"""


def _start():
    import ophook

    ophook._startup.start(origin="usercustomize")


_start()
