// The 8-bit formats quantizing kernels write; shared by kernels and host launchers.
#pragma once

enum QuantKind { kQuantNone = 0, kQuantInt8 = 1, kQuantE4m3fn = 2, kQuantE4m3fnuz = 3, kQuantE5m2 = 4 };
