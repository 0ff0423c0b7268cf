// hiredis from Debian's libhiredis-dev (0.14). Not through pkg-config: hiredis.pc adds
// -D_FILE_OFFSET_BITS=64, which SwiftPM rejects with a warning; the header path alone builds.
#include <hiredis/hiredis.h>
