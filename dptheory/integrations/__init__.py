"""Integrations with other trainers (optional extras; nothing here is imported by ``import dptheory``).

* :mod:`dptheory.integrations.opacus` -- ``pip install -e ".[opacus]"``: an Opacus accountant backed by
  :class:`accounting.accountant.RdpAccountant`, calibration with dptheory's certified accountants,
  DiceSGD / D2P2-SGD as Opacus ``DPOptimizer`` subclasses, and a lint of the training setup.
* :mod:`dptheory.integrations.flower` -- ``pip install -e ".[flower]"``: Clip-SGD / Clip21-SGD /
  Clip21-SGD2M as a Flower ``ServerApp`` and ``ClientApp`` (local DP in each client), run by
  ``dptheory run --backend flower`` on Flower's simulation engine or a local deployment.
"""
