/* interrupt.h — a run stopped by Ctrl-C, a batch system's SIGTERM or a hang-up ends like a failed run: every
 * rank stops at its next transfer or item, the ranks agree, the phase in progress is reported as cut short,
 * the files the run created are removed (unless kept, see docs/reliability.engine.md) and the document says
 * "interrupted" with the signal and the phase. The handler only records the signal; the workload polls it. */
#ifndef IOL_INTERRUPT_H
#define IOL_INTERRUPT_H
#include <signal.h>

/* Installs the recording handler for SIGINT, SIGTERM and SIGHUP (without SA_RESTART, so a blocked wait
 * returns EINTR), and ignores SIGPIPE: a launcher that closes the ranks' output while the run ends must not
 * kill a rank before it has cleaned up and written its document. Forked children inherit both. */
void iol_interrupt_install(void);
/* The signal received by this process, or learned from another rank (iol_interrupt_note), or 0. */
int iol_interrupt_pending(void);
/* The signal this process's own handler recorded (not one learned from another rank), or 0. */
int iol_interrupt_received(void);
/* Records a signal another rank received (the ranks exchange what they got when they agree), so every rank
 * names the same signal. Keeps a signal this process received itself. */
void iol_interrupt_note(int sig);
/* Local ranks (forked processes sharing memory): a word in the shared region every process's handler also
 * writes, so a signal that reaches one rank alone (or the engine process) stops every rank at its next poll,
 * not at the end of the phase. NULL stops sharing. */
void iol_interrupt_share(volatile sig_atomic_t *word);
/* The cleanup of an interrupted run is bounded: a batch system kills the job some time after its signal
 * (Slurm's KillWait is 30 s by default), and the run must have ended, with its document, well before. 1 once
 * IOL_INTERRUPT_CLEANUP_S seconds have passed since this process first saw the signal; cleanup loops stop
 * there and say what is left. */
#define IOL_INTERRUPT_CLEANUP_S 7
int iol_interrupt_overdue(void);
/* "SIGINT", "SIGTERM", "SIGHUP", ... ("signal N" for others). */
const char *iol_signal_name(int sig);

#endif
