#include "trace/trace-hw_dimmnet2.h"
