"""Models: small variable-free `tff.learning.models.FunctionalModel`s.

The MLP and linear regression (`dense`), the CNN of the guided-model-merging
experiments (`cnn`), the MovieLens dual encoder (`dual_encoder`) and the
character GRU language model (`char_lm`) with its vocabulary
(`char_vocabulary`). Layer: above `runtime.py`, `core/`, `training/` and
`asynchronous/`, which a model may import (the dual encoder uses `core/`'s
federated_select slices); below `tasks/`, `algorithms/` and the `tff_mixed`
facade, which it never imports: what a model shares with its data, such as
the character vocabulary, lives here.
"""
