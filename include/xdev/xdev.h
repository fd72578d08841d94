/* xdev/xdev.h - the whole public API of xdev, a portable device runtime. */
#ifndef XDEV_XDEV_H
#define XDEV_XDEV_H

#include "xdev/error.h"
#include "xdev/device.h"
#include "xdev/runtime.h"
#include "xdev/stream.h"
#include "xdev/event.h"
#include "xdev/memory.h"
#include "xdev/allocator.h"
#include "xdev/memviz.h"
#include "xdev/comm.h"
#include "xdev/communicator.h"
#include "xdev/trace.h"
#include "xdev/ipc.h"
#include "xdev/system.h"
#include "xdev/blas.h"
#include "xdev/fft.h"
#include "xdev/rng.h"
#include "xdev/dtype.h"
#include "xdev/ops.h"

#endif
