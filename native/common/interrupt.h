/* interrupt.h — a run stopped by Ctrl-C or a batch system's SIGTERM ends like a failed run: every rank stops
 * at its next transfer, the ranks agree, the files the run created are removed (unless -k) and the document
 * says "interrupted". The handler only records the signal; the workload polls it. */
#ifndef IOL_INTERRUPT_H
#define IOL_INTERRUPT_H

/* Installs the recording handler for SIGINT, SIGTERM and SIGHUP (without SA_RESTART, so a blocked wait
 * returns EINTR). Forked children inherit it and record into their own copy. */
void iol_interrupt_install(void);
/* The signal received, or 0. */
int iol_interrupt_pending(void);

#endif
