"""xpu_acceptance: the device-agnostic PyTorch acceptance workload of xpu-dra (deploy/acceptance)."""
