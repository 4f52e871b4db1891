import type { Card } from '../platform/cards.schemas.js';
import type { Principal } from '../platform/principal.js';
import { randomUUID } from 'node:crypto';
import type { MessageDoc } from './messages.repo.js';
import { MessagesErrors } from './messages.errors.js';
import { STALLED_REMOVAL_MS, REPLACE_PUSH_WITHIN_MS, checkedText, presentMessage, excerptOf, type MessagesDeps, type MessageView } from './message-shared.js';

/** Changing what was posted: edits and their versions, an app's card replaced, deletions (for oneself, for everyone) and finishing those a crash left midway. */
export class MessageChangesService {
  constructor(private readonly deps: MessagesDeps) {}

  /**
   * The author edits their message within MESSAGE_EDIT_WINDOW: cleaned as a post is (ciphertext in an
   * end-to-end encrypted room), the text before kept as an earlier version, the translations of a
   * broadcast post dropped (they translated the old text: the managers translate again), the replies'
   * excerpts and the chat list's preview made anew. Members' sockets get `message.edited`. `mentions`,
   * when given, replace the message's (members only): the members it newly mentions are pushed the
   * mention once and it counts among their unread mentions; nothing else is pushed.
   */
  async edit(principal: Principal, messageId: string, input: { message: string; mentions?: string[] | null | undefined }): Promise<MessageView> {
    const { message, room } = await this.deps.policy.forEnabledMember(principal, messageId);
    if (message.userId !== principal.userId || message.appId) throw MessagesErrors.EDIT_NOT_ALLOWED();
    if (message.deletedAt) throw MessagesErrors.MESSAGE_DELETED();
    const now = this.deps.clock();
    if (now.getTime() - message.createdAt.getTime() > this.deps.windows.editMs) throw MessagesErrors.EDIT_WINDOW_PASSED();
    const text = checkedText(room, input.message, message.attachmentIds.length);
    const mentions = input.mentions ? await this.deps.rooms.mentionable(room, principal.userId, input.mentions, false) : undefined;
    const before = await this.deps.messages.edit(messageId, text, now, mentions);
    if (!before) throw MessagesErrors.MESSAGE_DELETED();
    const newly = (mentions ?? []).filter((userId) => userId !== principal.userId && !(before.mentions ?? []).includes(userId));
    await this.deps.edits.insert({ _id: randomUUID(), messageId, message: before.message, since: before.editedAt ?? before.createdAt, replacedAt: now });
    const edited: MessageDoc = { ...before, message: text, editedAt: now, translations: {}, ...(mentions === undefined ? {} : { mentions }) };
    if (newly.length > 0) {
      if (edited.seq !== undefined && edited.parentId === null) await this.deps.activity.noteAddressed(room._id, { seq: edited.seq, by: principal.userId, to: newly });
      await this.deps.enqueueMentionPush(messageId, newly);
    }
    await this.deps.messages.updateReplies(messageId, excerptOf(edited));
    if (message.parentId === null) await this.deps.activity.replaceLast(room._id, messageId, text);
    await this.deps.events.toRoom(room._id, 'message.edited', { roomId: room._id, messageId, message: text, editedAt: now.toISOString() });
    return presentMessage(edited);
  }

  /** A message's versions, oldest first, for those who may read it. */
  async versions(principal: Principal, messageId: string): Promise<{ messageId: string; versions: { message: string; since: string; replacedAt: string | null }[] }> {
    const { message } = await this.deps.policy.forReader(principal, messageId);
    const earlier = message.deletedAt ? [] : await this.deps.edits.of(messageId);
    return {
      messageId,
      versions: [
        ...earlier.map((v) => ({ message: v.message, since: v.since.toISOString(), replacedAt: v.replacedAt.toISOString() })),
        { message: message.message, since: (message.editedAt ?? message.createdAt).toISOString(), replacedAt: null },
      ],
    };
  }

  /**
   * An app replaces the card of one of its messages (its answer to a press of one of the card's
   * buttons): members' sockets get `message.card-updated`; nothing is pushed. False when the message
   * is not that app's card, or was deleted.
   */
  async updateAppCard(messageId: string, appId: string, card: Card): Promise<boolean> {
    const now = this.deps.clock();
    const updated = await this.deps.messages.replaceCard(messageId, appId, card, now);
    if (!updated) return false;
    await this.deps.events.toRoom(updated.roomId, 'message.card-updated', { roomId: updated.roomId, messageId, card, editedAt: now.toISOString() });
    return true;
  }

  /**
   * Deletes a message for everyone: its author within MESSAGE_DELETE_WINDOW, the room's creator or an
   * admin, or a site administrator, at any time. Or, with `scope` me, hides it for the caller only.
   */
  async delete(principal: Principal, messageId: string, scope: 'everyone' | 'me'): Promise<void> {
    const { message, room } = await this.deps.policy.forReader(principal, messageId);
    if (scope === 'me') return this.deps.messages.hideFor(messageId, principal.userId);
    const own = message.userId === principal.userId && this.deps.clock().getTime() - message.createdAt.getTime() <= this.deps.windows.deleteMs;
    if (!own && !(await this.deps.rooms.mayRemoveMessages(principal, room))) throw MessagesErrors.DELETE_NOT_ALLOWED();
    if (!(await this.removeForEveryone(messageId))) throw MessagesErrors.MESSAGE_DELETED();
  }

  /**
   * The one way a message is deleted for everyone (its author, a manager, moderation): a tombstone,
   * its files and earlier versions gone, replies' excerpts and the chat list's preview made anew, the
   * members' sockets told `message.deleted`. False when there was nothing to delete.
   */
  async removeForEveryone(messageId: string): Promise<boolean> {
    const { removals } = this.deps;
    const unfinished = await removals.pending(messageId);
    await removals.begin(messageId, this.deps.clock());
    const before = await this.deps.messages.tombstone(messageId, this.deps.clock());
    if (!before) {
      // Deleted already: by a deletion that died midway (its row was there), which this one finishes;
      // or long ago (then the row just made is taken back).
      const tombstone = unfinished ? await this.deps.messages.findById(messageId) : null;
      if (tombstone?.deletedAt) await this.finishRemoval(tombstone);
      else await removals.done(messageId);
      return false;
    }
    await this.finishRemoval(before);
    return true;
  }

  /**
   * Every follow-up of a deletion, each of which may run again: the files, the earlier versions, the
   * replies' excerpts, the chat list's preview and unread counts, the broadcast, the replacement push.
   */
  private async finishRemoval(before: MessageDoc): Promise<void> {
    const messageId = before._id;
    await this.deps.removeFiles(messageId);
    await this.deps.edits.removeOf(messageId);
    await this.deps.messages.updateReplies(messageId, { id: messageId, userId: before.userId, excerpt: null, kind: 'DELETED' });
    if (before.parentId === null) {
      await this.deps.activity.replaceLast(before.roomId, messageId, '');
      // Unread counts and badges stop counting it.
      if (before.seq !== undefined) await this.deps.activity.noteDeleted(before.roomId, before.seq);
    }
    await this.deps.events.toRoom(before.roomId, 'message.deleted', { roomId: before.roomId, messageId });
    // A push shown for it in the last day is replaced (same collapse key: the room) by one saying it was deleted.
    if (this.deps.clock().getTime() - before.createdAt.getTime() < REPLACE_PUSH_WITHIN_MS) await this.deps.enqueuePush(messageId, true);
    await this.deps.removals.done(messageId);
  }

  /** Deletions a dead process left midway (tombstone written, follow-ups not all done), finished; how many. */
  async finishStalledRemovals(now: Date): Promise<number> {
    const stalled = await this.deps.removals.stalled(new Date(now.getTime() - STALLED_REMOVAL_MS), 100);
    for (const messageId of stalled) {
      const message = await this.deps.messages.findById(messageId);
      if (message?.deletedAt) await this.finishRemoval(message);
      // Gone, or not a tombstone (the process died before writing it: the member's retry deletes it).
      else await this.deps.removals.done(messageId);
    }
    return stalled.length;
  }
}
