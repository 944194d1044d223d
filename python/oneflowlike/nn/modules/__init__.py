"""Layer classes, one file per concern, as torch.nn.modules lays them out."""

from . import activation
from . import attention
from . import batchnorm
from . import channelshuffle
from . import container
from . import conv
from . import distance
from . import dropout
from . import flatten
from . import fold
from . import instancenorm
from . import lazy
from . import lazy_conv
from . import linear
from . import loss
from . import normalization
from . import padding
from . import pixelshuffle
from . import pooling
from . import rnn
from . import sparse
from . import transformer
from . import upsampling

from .activation import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .batchnorm import *  # noqa: F401,F403
from .channelshuffle import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .fold import *  # noqa: F401,F403
from .instancenorm import *  # noqa: F401,F403
from .lazy import *  # noqa: F401,F403
from .lazy_conv import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403

__all__ = sorted(
    name
    for m in (
        activation,
        attention,
        batchnorm,
        channelshuffle,
        container,
        conv,
        distance,
        dropout,
        flatten,
        fold,
        instancenorm,
        lazy,
        lazy_conv,
        linear,
        loss,
        normalization,
        padding,
        pixelshuffle,
        pooling,
        rnn,
        sparse,
        transformer,
        upsampling,
    )
    for name in m.__all__
)
