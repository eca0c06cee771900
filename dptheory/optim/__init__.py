"""Private optimizers in torch (imported only on demand: ``import dptheory`` stays torch-free).

One module per paper: :mod:`.dpsgd` (DPSGD-GC), :mod:`.dicesgd` (DiceSGD, Adam variant),
:mod:`.clip21` (Clip-SGD, Clip21-SGD, Clip21-SGD2M), :mod:`.d2p2` (D2P2-SGD, D2P-SGD, DP2-SGD).
Each optimizer's ``mechanism()`` says which privacy mechanism the code realises, with
``PrivacyParams`` field names, so that accounting and code cannot drift apart.
:mod:`.batched` runs many seeds of a toy configuration as one tensor program (same iterates).
"""

from dptheory.optim.base import DataDependentBatchSizeWarning, PrivateOptimizer, resolve_device
from dptheory.optim.clip21 import Client, FederatedClipping, Server
from dptheory.optim.d2p2 import D2P2SGD, D2PSGD, DP2SGD
from dptheory.optim.dicesgd import DiceAdam, DiceSGD
from dptheory.optim.dpsgd import DPSGD

__all__ = [
    "PrivateOptimizer",
    "DataDependentBatchSizeWarning",
    "resolve_device",
    "DPSGD",
    "DiceSGD",
    "DiceAdam",
    "D2P2SGD",
    "D2PSGD",
    "DP2SGD",
    "Client",
    "Server",
    "FederatedClipping",
]
