"""Type aliases of the public API's annotations (documentation for readers and type checkers;
nothing here is checked at run time)."""
import os
from typing import Any, Sequence, Union

#: A size in bytes: an int, or a string read as the command line reads sizes ("4G" = 4e9 bytes,
#: "4GiB" = 4 * 2**30).
Size = Union[int, str, None]
#: A GPU: an ordinal, "cuda", "cuda:N", or a torch.device.
Device = Union[int, str, Any, None]
#: A path to a file or a directory.
Path = Union[str, bytes, "os.PathLike[str]"]
#: An array the library reads: a numpy array, a CPU torch tensor, or a sequence of numbers.
ArrayLike = Union[Any, Sequence[int], Sequence[float]]
