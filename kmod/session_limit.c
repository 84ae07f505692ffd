// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: how many counting sessions one user may hold.
 *
 * A session makes the module allocate on its caller's behalf: the
 * session, its per-CPU totals (words per range and node, on every
 * possible CPU), a perf event per feed event and counted thread, the
 * device feeds' span references. The memory is charged to the caller's
 * memory cgroup (GFP_KERNEL_ACCOUNT); the perf events are not perf
 * files, so neither RLIMIT_NOFILE nor perf's own limits see them. So a
 * user without CAP_SYS_ADMIN in the initial user namespace holds at most
 * refcnt.max_user_sessions sessions at once, counted by effective uid as
 * inotify counts its instances; the next start is EMFILE, as there.
 * CAP_SYS_ADMIN is not limited: it can load and unload the module.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/uidgid.h>
#include <linux/xarray.h>

#include "refcnt.h"

/* refcnt.max_user_sessions: sessions per user without CAP_SYS_ADMIN. */
static unsigned int max_user_sessions = 16;
module_param(max_user_sessions, uint, 0644);
MODULE_PARM_DESC(max_user_sessions,
		 "Counting sessions one user without CAP_SYS_ADMIN may hold at once (default 16, 0: none)");

/* Sessions held, by kuid; an entry goes with its last session. */
static DEFINE_XARRAY(refcnt_user_sessions);
static DEFINE_MUTEX(refcnt_user_lock);

/**
 * refcnt_session_privileged() - whether the caller has CAP_SYS_ADMIN
 *
 * Return: true if it has it in the initial user namespace; asked without
 * an audit record, since not having it is no denial here.
 */
bool refcnt_session_privileged(void)
{
	return ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN);
}

/**
 * refcnt_session_charge() - count one more session against the caller
 * @uid:	set to the uid charged; INVALID_UID when not charged
 *
 * Return: 0, -EMFILE when the caller holds max_user_sessions already,
 * or -ENOMEM.
 */
int refcnt_session_charge(kuid_t *uid)
{
	unsigned long n, id;
	int err = 0;

	*uid = INVALID_UID;
	if (refcnt_session_privileged())
		return 0;
	id = __kuid_val(current_euid());
	mutex_lock(&refcnt_user_lock);
	n = xa_to_value(xa_load(&refcnt_user_sessions, id) ?: xa_mk_value(0));
	if (n >= READ_ONCE(max_user_sessions))
		err = -EMFILE;
	else
		err = xa_err(xa_store(&refcnt_user_sessions, id,
				      xa_mk_value(n + 1), GFP_KERNEL_ACCOUNT));
	mutex_unlock(&refcnt_user_lock);
	if (!err)
		*uid = current_euid();
	return err;
}

/**
 * refcnt_session_uncharge() - a session charged to @uid is gone
 * @uid:	what refcnt_session_charge() set
 */
void refcnt_session_uncharge(kuid_t uid)
{
	unsigned long n, id = __kuid_val(uid);

	if (!uid_valid(uid))
		return;
	mutex_lock(&refcnt_user_lock);
	n = xa_to_value(xa_load(&refcnt_user_sessions, id) ?: xa_mk_value(0));
	if (WARN_ON_ONCE(!n) || n == 1)
		xa_erase(&refcnt_user_sessions, id);
	else
		xa_store(&refcnt_user_sessions, id, xa_mk_value(n - 1),
			 GFP_KERNEL);
	mutex_unlock(&refcnt_user_lock);
}
