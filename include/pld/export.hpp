// pld — symbol visibility. The library is built with -fvisibility=hidden; only what is marked
// PLD_API is exported, so the ABI is exactly the public headers.
#pragma once

#if defined(PLD_BUILDING_LIBRARY)
#define PLD_API __attribute__((visibility("default")))
#else
#define PLD_API
#endif
