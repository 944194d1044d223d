"""torch.nn's recurrent and Transformer families with a torch.optim optimizer: a bidirectional
two-layer LSTM feeds a causal pre-norm Transformer encoder, trained a few steps with Adadelta.

    python examples/tour/12_torch_modules.py

The modules take PyTorch's arguments and hold PyTorch's parameter names, so a PyTorch
state_dict loads into them as it is.
"""

import oneflowlike as flow
import oneflowlike.nn as nn

flow.manual_seed(0)
lstm = nn.LSTM(input_size=8, hidden_size=16, num_layers=2, bidirectional=True, batch_first=True)
layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, batch_first=True, norm_first=True)
encoder = nn.TransformerEncoder(layer, num_layers=2)  # two copies of the layer
head = nn.Linear(32, 1)
params = [*lstm.parameters(), *encoder.parameters(), *head.parameters()]
opt = flow.optim.Adadelta(params, lr=1.0)

x = flow.randn(4, 10, 8)
target = x.sum(-1, keepdim=True).cumsum(1)  # a running sum: the causal mask lets it be learned
mask = nn.Transformer.generate_square_subsequent_mask(10)
losses = []
for step in range(20):
    out, (h, c) = lstm(x)  # out: (4, 10, 32), h and c: (4, 4, 16)
    y = head(encoder(out, mask=mask, is_causal=True))
    loss = nn.functional.mse_loss(y, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
assert tuple(out.shape) == (4, 10, 32) and tuple(h.shape) == (4, 4, 16)
assert "layers.1.self_attn.in_proj_weight" in encoder.state_dict()
assert losses[-1] < losses[0]
