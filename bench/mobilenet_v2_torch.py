"""PyTorch side of bench/mobilenet_v2.cpp: the same MobileNetV2 (Keras' architecture: alpha 1.0, BatchNorm
momentum 0.999 / epsilon 1e-3, ReLU6, 10 classes), SGD momentum 0.9, float32, eager, channels_last, the batch on
the device before the clock starts, one synchronize at the end. Needs only torch (no torchvision).

    python3 bench/mobilenet_v2_torch.py [batch=64] [steps=30] [warmup=5]
"""
import json
import sys
import time

import torch
from torch import nn


def conv_bn(cin, cout, kernel, stride, groups=1, relu=True):
    layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout, eps=1e-3, momentum=1e-3)]
    if relu:
        layers.append(nn.ReLU6(inplace=True))
    return layers


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expansion):
        super().__init__()
        hidden = cin * expansion
        layers = conv_bn(cin, hidden, 1, 1) if expansion != 1 else []
        layers += conv_bn(hidden, hidden, 3, stride, groups=hidden) + conv_bn(hidden, cout, 1, 1, relu=False)
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


def mobilenet_v2(classes=10):
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1)]
    layers, cin = conv_bn(3, 32, 3, 2), 32
    for t, c, n, s in settings:
        for i in range(n):
            layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
            cin = c
    layers += conv_bn(cin, 1280, 1, 1) + [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1280, classes)]
    return nn.Sequential(*layers)


def main():
    batch = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    warmup = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(1)
    model = mobilenet_v2().to(device).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = (torch.rand(batch, 3, 224, 224, device=device) * 2 - 1).to(memory_format=torch.channels_last)
    y = torch.arange(batch, device=device) % 10

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(warmup):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    peak = torch.cuda.max_memory_reserved() / 2**20 if device.type == "cuda" else 0.0
    print(json.dumps({"framework": "torch", "model": "mobilenet_v2", "device": str(device), "batch": batch,
                      "images_per_sec": round(batch * steps / seconds, 1), "peak_reserved_mib": round(peak, 1),
                      "last_loss": round(float(loss), 4)}), flush=True)


if __name__ == "__main__":
    main()
