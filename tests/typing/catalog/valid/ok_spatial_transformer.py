"""A spatial transformer as a PyTorch-style Module: a localisation net predicts each image's affine
map, F.affine_grid turns it into a sampling grid and F.grid_sample warps the image; one Adam step."""

from typing import Any

import gradtape
import gradtape.nn.functional as F
from gradtape import Tensor, nn, optim


class SpatialTransformer(nn.Module):
    def __init__(self, size: int) -> None:
        self.size = size
        self.flatten = nn.Flatten()
        self.loc = nn.Linear(size * size, 6)

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        theta = self.loc(self.flatten(x)).reshape(-1, 2, 3)
        grid = F.affine_grid(theta, [x.shape[0], 1, self.size, self.size], align_corners=False)
        return F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)


gradtape.manual_seed(0)
model = SpatialTransformer(8)
opt = optim.Adam(model.parameters(), lr=1e-3)
images = gradtape.randn(4, 1, 8, 8)
targets = gradtape.randn(4, 1, 8, 8)
opt.zero_grad()
loss = F.mse_loss(model(images), targets)
loss.backward()
opt.step()
print(loss.item())
