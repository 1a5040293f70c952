import os

import torch

print("GPUs:", torch.cuda.device_count())
os.environ["CUDA_VISIBLE_DEVICES"] = "1"
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(4, 8).to(device)
