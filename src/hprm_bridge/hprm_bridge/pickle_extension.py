"""The copyreg extension codes of hprm_bridge's pickled classes.

A message is pickled as a call of ``message_pickle._rebuild_flat``. By name, an unpickler
resolves that function through the import system on every message: 35 us when run cold, as
a message's decode runs right after a model evicted the caches. As an extension code
(copyreg's registry, pickle's EXT opcodes) it is two bytes on the wire and a dict lookup
after the first message. Both sides must know the code: every process that imports the
message classes registers it, and ``hprm_core.serialization.load_pickle_extensions`` (the
data plane calls it as a federate starts) imports this module through the
``hprm.pickle_extensions`` entry point, so a federate that never imported hprm_bridge
still rebuilds the messages it receives. Kept apart from ``message_pickle``: importing this
costs nothing (the function's own module is imported when a message first arrives).
"""

import copyreg

REBUILD_FLAT = 0x4850  # "HP": past the 1-255 that copyreg's documentation assigns

copyreg.add_extension("hprm_bridge.message_pickle", "_rebuild_flat", REBUILD_FLAT)
