/** The authenticated caller of a request or socket: a user acting through one of their devices. */
export interface Principal {
  userId: string;
  deviceId: string;
}
