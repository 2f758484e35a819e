/* The control API's internal half: mallopt()'s mapping (override.c calls
 * it; the hak_ctl* entry points are in hakmem.h). */
#ifndef HK_CTL_H
#define HK_CTL_H

int hk_ctl_mallopt(int param, int value);

#endif
