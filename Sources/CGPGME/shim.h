#include <gpgme.h>
