import torch
import torch.nn as nn
import torchvision

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torchvision.models.resnet18(weights=None).to(device)
model.fc = nn.Linear(model.fc.in_features, 10)
images = torch.randn(2, 3, 64, 64).to(device)
logits = model(images)
