"""Figures drawn in memory, below the campaign layer, so that a run result can draw itself (``RunOutput.plot()``).

Static figures are matplotlib on bare ``Figure`` objects (no pyplot, no global state): :mod:`.style` holds the
shared colours and the PNG + SVG saving, :mod:`.steps` the resampling of step functions, :mod:`.run` one
simulation's figure. The report layer (``wattsched.report``) writes them into report folders.
"""
