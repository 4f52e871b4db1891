/**
 * Do-not-disturb for a whole account (issue 57, item 5): until a time, and quiet hours each day in the
 * user's time zone. While quiet, pushes go without sound or interruption (the badge still moves) and
 * calls ring only from connections, when the user allows that.
 */
export interface QuietHours {
  /** "22:00": local time, 24-hour clock. */
  start: string;
  /** "07:00": before start means the hours cross midnight. */
  end: string;
  /** An IANA time zone ("Europe/Berlin"). */
  timeZone: string;
}

export interface NotificationSettings {
  doNotDisturbUntil: Date | null;
  quietHours: QuietHours | null;
  /** While quiet, calls from connections still ring. */
  callsFromConnections: boolean;
}

export const DEFAULT_NOTIFICATION_SETTINGS: NotificationSettings = { doNotDisturbUntil: null, quietHours: null, callsFromConnections: true };

/** Whether `timeZone` is one the runtime knows (IANA names). */
export function isTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone });
    return true;
  } catch {
    return false;
  }
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** Whether a call rings the user (its VoIP push): always outside quiet times; within them, only a connection's, when they allow it. */
export function callRings(settings: NotificationSettings | undefined, now: Date, fromConnection: boolean): boolean {
  return !quietNow(settings, now) || (fromConnection && settings?.callsFromConnections !== false);
}

/** Whether the account is quiet at `now`: do-not-disturb until a later time, or within its quiet hours where it is. */
export function quietNow(settings: NotificationSettings | undefined, now: Date): boolean {
  if (!settings) return false;
  if (settings.doNotDisturbUntil && settings.doNotDisturbUntil.getTime() > now.getTime()) return true;
  const hours = settings.quietHours;
  if (!hours || hours.start === hours.end) return false;
  const parts = new Intl.DateTimeFormat('en-GB', { timeZone: hours.timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).formatToParts(now);
  const local = Number(parts.find((part) => part.type === 'hour')?.value ?? 0) * 60 + Number(parts.find((part) => part.type === 'minute')?.value ?? 0);
  const [start, end] = [minutesOf(hours.start), minutesOf(hours.end)];
  // 22:00-07:00 crosses midnight: quiet from start to midnight and from midnight to end.
  return start < end ? local >= start && local < end : local >= start || local < end;
}
