"""Device selection, device tensors and the OpenCL program loader."""

from .device import Device, DeviceManager, NoDeviceError, manager
from .tensor import Tensor

__all__ = ["Device", "DeviceManager", "NoDeviceError", "Tensor", "manager"]
