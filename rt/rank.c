/* The job rank and size for %r and %R in TALLY_OUTPUT (pattern.c), from the
 * launcher's environment, so that a process of an MPI job names its file
 * by rank without linking anything MPI.  Read at every expansion through
 * the runtime's one environment gate (tally_rt_env), so nothing here is
 * trusted that the gate does not hand out.
 *
 * The first variable of the list that is set decides; it must be a
 * decimal number (at most 9 digits), otherwise it is reported once and the
 * next one is tried.  Outside a job none is set: %r is then "pid" and the
 * process id (never a number alone, which would pass for a rank, and
 * never the same for two processes running at once), %R is "0".  */
#include "rt.h"

/* Launchers' variables, most specific first.  MPI_LOCALRANKID (Intel MPI,
   MPICH's Hydra) is a rank within the node, not in the job, and is not
   used.  */
static const char *const rank_vars[] = {
  "OMPI_COMM_WORLD_RANK", /* Open MPI (mpirun, prterun) */
  "PMIX_RANK",            /* PMIx launchers (Open MPI 5, Slurm --mpi=pmix) */
  "PMI_RANK",             /* MPICH, Hydra, Intel MPI, PMI-1/2 */
  "MV2_COMM_WORLD_RANK",  /* MVAPICH2 */
  "SLURM_PROCID",         /* srun */
  "FLUX_TASK_RANK",       /* flux run */
  "PALS_RANKID",          /* HPE/Cray PALS (aprun's successor) */
  "ALPS_APP_PE",          /* Cray aprun */
  NULL,
};
static const char *const size_vars[] = {
  "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_NTASKS",
  "FLUX_JOB_SIZE", "PALS_SIZE", NULL,
};

static int reported;

/* The first of VARS holding a decimal number, into DIGITS; 0 if none.  */
static int
first_number (const char *const *vars, char digits[24])
{
  for (const char *const *v = vars; *v; v++)
    {
      const char *s = tally_rt_env (*v);
      if (!s)
        continue;
      size_t n = 0;
      while (s[n] >= '0' && s[n] <= '9' && n < 10)
        n++;
      if (n == 0 || n > 9 || s[n])
        {
          if (!__atomic_exchange_n (&reported, 1, __ATOMIC_RELAXED))
            tally_rt_error ("%s=%s is not a job rank or size (a decimal "
                            "number); ignored for %%r and %%R", *v, s);
          continue;
        }
      /* No leading zeros: "007" names the same rank as "7".  */
      while (n > 1 && *s == '0')
        s++, n--;
      for (size_t i = 0; i < n; i++)
        digits[i] = s[i];
      digits[n] = 0;
      return 1;
    }
  return 0;
}

int
tally_rt_job_rank (char digits[24])
{
  return first_number (rank_vars, digits);
}

int
tally_rt_job_size (char digits[24])
{
  return first_number (size_vars, digits);
}
