"""The numerics and the models, the lowest layer: exact Runge–Kutta tableaux (:mod:`.schemes`),
fixed-step integration (:mod:`.integrate`), bases of weight functions (:mod:`.bases`), the OdeBlock
(:mod:`.odeblock`), ContinuousNet and the ResNet it is with Euler (:mod:`.models`),
and the argument checks every layer shares (:mod:`.validation`).  Imports only torch and numpy.
"""
