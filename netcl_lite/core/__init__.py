"""Device selection, device tensors, the program loader and what a queue has in flight."""

from .device import Device, DeviceManager, NoDeviceError, manager, synchronize
from .stream import BadInputError, NonFiniteError
from .tensor import Tensor, device_bytes_in_use, track_allocations

__all__ = ["BadInputError", "Device", "DeviceManager", "NoDeviceError", "NonFiniteError", "Tensor",
           "device_bytes_in_use", "manager", "synchronize", "track_allocations"]
